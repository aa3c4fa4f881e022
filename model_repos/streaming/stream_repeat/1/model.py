"""A decoupled model: one response per element of IN, each after a pause, then the final flag.

Response i carries OUT = IN[i] and IDX = i. The config's parameters set the pause before each response
(``pause_ms``) and an index that is never sent (``drop_index``, -1 for none), so that a slowed or a lossy
variant is a config change of the same model.
"""

import json
import time

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        config = json.loads(args["model_config"])
        if not pb_utils.using_decoupled_model_transaction_policy(config):
            raise pb_utils.TritonModelException("stream_repeat needs model_transaction_policy { decoupled: true }")
        parameters = config.get("parameters", {})
        self.pause_s = float(parameters.get("pause_ms", {}).get("string_value", "0")) / 1000.0
        self.drop_index = int(parameters.get("drop_index", {}).get("string_value", "-1"))

    def execute(self, requests):
        for request in requests:
            sender = request.get_response_sender()
            values = pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)
            for index, value in enumerate(values):
                time.sleep(self.pause_s)
                if index == self.drop_index:
                    continue
                outputs = [
                    pb_utils.Tensor("OUT", np.array([value], dtype=np.int32)),
                    pb_utils.Tensor("IDX", np.array([index], dtype=np.int32)),
                ]
                sender.send(pb_utils.InferenceResponse(output_tensors=outputs))
            sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)
        return None
