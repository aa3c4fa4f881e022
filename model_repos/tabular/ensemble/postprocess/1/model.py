"""Triton python model: a tabular classifier's logits → PROBABILITIES (softmax) and LABEL (the class name).

The postprocess step of the tabular example's ensemble. Class names come from the config's ``labels``
parameter (comma-separated, in logit order).
"""

import json

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        labels = config["parameters"]["labels"]["string_value"]
        self.labels = np.array([label.encode("utf-8") for label in labels.split(",")], dtype=object)

    def execute(self, requests):
        responses = []
        for request in requests:
            logits = pb_utils.get_input_tensor_by_name(request, "logits").as_numpy().astype(np.float64)
            shifted = np.exp(logits - logits.max(axis=-1, keepdims=True))
            probs = (shifted / shifted.sum(axis=-1, keepdims=True)).astype(np.float32)
            labels = self.labels[probs.argmax(axis=-1)].reshape(-1, 1)
            outputs = [pb_utils.Tensor("PROBABILITIES", probs), pb_utils.Tensor("LABEL", labels)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
