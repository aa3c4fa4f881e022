"""square_int32's contract with its responses sent from a thread per request, as Triton's own example does.

``execute`` returns at once; each request's thread sends n responses (OUT = [n]) and then the final flag.
``finalize`` waits for the threads still sending, so that unloading never cuts a stream short.
"""

import threading

import numpy as np
import triton_python_backend_utils as pb_utils


class TritonPythonModel:
    def initialize(self, args):
        self.senders = []
        self.lock = threading.Lock()

    def execute(self, requests):
        for request in requests:
            count = int(pb_utils.get_input_tensor_by_name(request, "IN").as_numpy().reshape(-1)[0])
            thread = threading.Thread(target=self.respond, args=(request.get_response_sender(), count), daemon=True)
            with self.lock:
                self.senders = [t for t in self.senders if t.is_alive()] + [thread]
            thread.start()
        return None

    def respond(self, sender, count):
        for _ in range(count):
            out = pb_utils.Tensor("OUT", np.array([count], dtype=np.int32))
            sender.send(pb_utils.InferenceResponse(output_tensors=[out]))
        sender.send(flags=pb_utils.TRITONSERVER_RESPONSE_COMPLETE_FINAL)

    def finalize(self):
        with self.lock:
            senders = list(self.senders)
        for thread in senders:
            thread.join(timeout=10)
