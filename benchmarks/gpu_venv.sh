# Sourced by the lent-device scripts: a venv at /tmp/venv whose .pth puts /tmp/site (numpy 1.26, onnxruntime-gpu,
# tritonclient) before the image's packages, so that the tests and the python backend's stub (built for numpy 1;
# with the image's numpy 2 it returns empty output tensors) share one environment; then PATH and the nvidia libs.
if [ ! -x /tmp/venv/bin/python3 ]; then
  /usr/bin/python3 -m venv /tmp/venv
  sp=$(/tmp/venv/bin/python3 -c "import site; print(site.getsitepackages()[0])")
  printf '/tmp/site\n/opt/torch/.venv/lib/python3.12/site-packages\n' > "$sp/zz_site.pth"
fi
export PATH=/tmp/venv/bin:$PATH
# onnxruntime-gpu's CUDA provider needs every lib folder of the nvidia packages
nvidia_root=$(python3 -c "import nvidia, os; print(os.path.dirname(nvidia.__path__[0]))" 2>/dev/null || true)
if [ -n "$nvidia_root" ]; then
  LD_LIBRARY_PATH="$(find "$nvidia_root/nvidia" -maxdepth 2 -type d -name lib | tr '\n' ':')${LD_LIBRARY_PATH:-}"
  export LD_LIBRARY_PATH
fi
