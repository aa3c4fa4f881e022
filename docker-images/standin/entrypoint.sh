#!/bin/sh
# Like NGC's /opt/nvidia/nvidia_entrypoint.sh: say what this image is, then run the command given.
echo "pytest-triton stand-in for the NGC tritonserver image (nvidia-pytriton's tritonserver, python backend only)" >&2
exec "$@"
