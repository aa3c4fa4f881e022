"""Triton python model: logits → LABEL (text) and SCORE (softmax probability of the label).

Step 3 of scenario 07's ensemble. Labels come from the config's ``labels`` parameter
(comma-separated, in logit order).
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
            probs = shifted / shifted.sum(axis=-1, keepdims=True)
            best = probs.argmax(axis=-1)
            labels = self.labels[best].reshape(-1, 1)
            scores = probs[np.arange(len(best)), best].astype(np.float32).reshape(-1, 1)
            outputs = [pb_utils.Tensor("LABEL", labels), pb_utils.Tensor("SCORE", scores)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
