"""Triton python model: PREMISE and HYPOTHESIS text → input_ids and attention_mask (INT64, padded).

Step 1 of scenario 07's ensemble. The tokenizer file sits beside this model.py; its max
length and pad id come from the model config's parameters.
"""

import json
import os

import numpy as np
import triton_python_backend_utils as pb_utils
from tokenizers import Tokenizer


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        params = {key: value["string_value"] for key, value in config.get("parameters", {}).items()}
        self.max_length = int(params.get("max_length", "512"))
        self.pad_id = int(params.get("pad_id", "0"))
        folder = os.path.join(args["model_repository"], args["model_version"])
        self.tokenizer = Tokenizer.from_file(os.path.join(folder, "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.enable_truncation(self.max_length, strategy="longest_first")

    def _encode(self, premises, hypotheses):
        ids = np.full((len(premises), self.max_length), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(premises), self.max_length), dtype=np.int64)
        for row, (premise, hypothesis) in enumerate(zip(premises, hypotheses)):
            tokens = self.tokenizer.encode(premise.decode("utf-8"), hypothesis.decode("utf-8")).ids
            ids[row, : len(tokens)] = tokens
            mask[row, : len(tokens)] = 1
        return ids, mask

    def execute(self, requests):
        responses = []
        for request in requests:
            premises = pb_utils.get_input_tensor_by_name(request, "PREMISE").as_numpy().reshape(-1)
            hypotheses = pb_utils.get_input_tensor_by_name(request, "HYPOTHESIS").as_numpy().reshape(-1)
            ids, mask = self._encode(premises, hypotheses)
            outputs = [pb_utils.Tensor("input_ids", ids), pb_utils.Tensor("attention_mask", mask)]
            responses.append(pb_utils.InferenceResponse(output_tensors=outputs))
        return responses
