#!/usr/bin/env bash
# Build the local stand-in for the NGC tritonserver image: same entry point (`tritonserver` on PATH,
# /opt/tritonserver/{bin,lib,backends/python}, a Python for the python backend), built offline from
# Debian's packages (debootstrap + `docker import`) and the tritonserver of the installed nvidia-pytriton.
#
#   docker-images/standin/build.sh              build unless an image for these inputs exists; print its tag last
#   docker-images/standin/build.sh --print-tag  print the tag for the current inputs, build nothing
#   docker-images/standin/build.sh --rebuild    build even if the image exists
#
# The tag is a hash of the inputs: this script, its folder (requirements, every package pinned and installed
# without resolving, entry point), the Debian suite and packages, and the nvidia-pytriton install (its RECORD
# lists every file with its sha256): two environments with the same inputs build the same image.
# Debian updates inside one suite do not change the tag; use --rebuild to pick them up.
# Environment: PYTHON (the Python whose nvidia-pytriton is copied; default: python3 on PATH),
# DEBIAN_MIRROR (default http://deb.debian.org/debian), TMPDIR (the rootfs is built there).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
suite=bookworm
image_python=3.11 # bookworm's python3; checked against the rootfs below
packages=python3,libpython${image_python},ca-certificates
repo=pytest-triton-standin
label=org.pytest-triton.standin

say() { echo "standin: $*" >&2; }
die() { say "$*"; exit 1; }

mode=build
case "${1:-}" in
  "") ;;
  --print-tag) mode=print ;;
  --rebuild) mode=rebuild ;;
  *) echo "usage: $0 [--print-tag|--rebuild]" >&2; exit 2 ;;
esac

# where nvidia-pytriton is installed, and its RECORD (one sha256 per file of the wheel)
read -r pytriton_dir record < <("$python" - <<'EOF'
import importlib.metadata as md
import importlib.util
import sys
try:
    dist = md.distribution("nvidia-pytriton")
except md.PackageNotFoundError:
    sys.exit("nvidia-pytriton is not installed in this Python: pip install 'pytest-triton[serve]'")
spec = importlib.util.find_spec("pytriton")
record = next(f for f in dist.files or [] if f.name == "RECORD")
print(list(spec.submodule_search_locations)[0], dist.locate_file(record))
EOF
) || die "could not find nvidia-pytriton with PYTHON=$python"
server_dir=$pytriton_dir/tritonserver
libs_dir=$(dirname "$pytriton_dir")/nvidia_pytriton.libs
stub=$server_dir/python_backend_stubs/$image_python/triton_python_backend_stub
[ -x "$server_dir/bin/tritonserver" ] || die "no tritonserver binary at $server_dir/bin/tritonserver"
[ -d "$libs_dir" ] || die "no nvidia_pytriton.libs beside $pytriton_dir (an editable pytriton install is not supported)"
[ -f "$stub" ] || die "nvidia-pytriton has no python backend stub for Python $image_python (folder $server_dir/python_backend_stubs)"

key=$(
  {
    echo "suite=$suite mirror-independent packages=$packages python=$image_python"
    cat "$here"/build.sh "$here"/requirements.txt "$here"/entrypoint.sh
    cat "$record"
  } | sha256sum | cut -c1-16
)
tag=$repo:$key

if [ "$mode" = print ]; then
  echo "$tag"
  exit 0
fi

docker version --format '{{.Server.Version}}' >/dev/null 2>&1 \
  || die "no Docker daemon answers (DOCKER_HOST=${DOCKER_HOST:-unix:///var/run/docker.sock}): start one, e.g. .ci/dockerd.sh start"

if [ "$mode" = build ] && docker image inspect "$tag" >/dev/null 2>&1; then
  say "image $tag is cached (inputs unchanged): nothing to build"
  echo "$tag"
  exit 0
fi

command -v debootstrap >/dev/null || die "debootstrap not found: apt-get install -y debootstrap"
if [ "$(id -u)" -ne 0 ]; then
  # debootstrap needs root: a hosted CI runner has password-less sudo
  sudo -n true 2>/dev/null || die "debootstrap needs root (this is uid $(id -u), and sudo asks for a password)"
  say "not root: running again under sudo"
  exec sudo -n env PATH="$PATH" PYTHON="$(command -v "$python")" DEBIAN_MIRROR="$mirror" \
    ${DOCKER_HOST:+DOCKER_HOST="$DOCKER_HOST"} bash "$0" "$@"
fi

started=$SECONDS
work=$(mktemp -d "${TMPDIR:-/tmp}/pytest-triton-standin.XXXXXX")
trap 'rm -rf "$work"' EXIT
rootfs=$work/rootfs

say "debootstrap $suite ($packages) from $mirror"
debootstrap --variant=minbase --include="$packages" "$suite" "$rootfs" "$mirror" >"$work/debootstrap.log" 2>&1 \
  || { tail -n 20 "$work/debootstrap.log" >&2; die "debootstrap failed (log above)"; }

found_python=$(readlink "$rootfs/usr/bin/python3" || true)
[ "$found_python" = "python$image_python" ] \
  || die "the rootfs's python3 is '$found_python', expected python$image_python: update image_python in $0"
[ -e "$rootfs/usr/lib/x86_64-linux-gnu/libpython$image_python.so.1.0" ] \
  || die "libpython$image_python.so.1.0 is missing from the rootfs (the python backend stub links it)"

say "python packages for Python $image_python (requirements.txt)"
site=$rootfs/usr/local/lib/python$image_python/dist-packages
"$python" -m pip install --quiet --disable-pip-version-check --no-compile \
  --target "$site" --python-version "$image_python" --implementation cp \
  --platform manylinux2014_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --only-binary=:all: --no-deps -r "$here/requirements.txt" \
  || die "pip could not install requirements.txt for Python $image_python"

say "tritonserver from $pytriton_dir"
opt=$rootfs/opt/tritonserver
mkdir -p "$opt/bin" "$opt/lib" "$opt/backends/python" "$rootfs/opt/nvidia" "$rootfs/models"
cp "$server_dir/bin/tritonserver" "$opt/bin/"
cp -r "$libs_dir/." "$opt/lib/"
cp "$server_dir/backends/python/libtriton_python.so" "$server_dir/backends/python/triton_python_backend_utils.py" \
  "$stub" "$opt/backends/python/"
[ -d "$server_dir/caches" ] && cp -r "$server_dir/caches" "$opt/caches"
cp "$here/entrypoint.sh" "$rootfs/opt/nvidia/nvidia_entrypoint.sh"
ln -s /opt/tritonserver/bin/tritonserver "$rootfs/usr/local/bin/tritonserver"

# what an image does not need: package caches, documentation, locales
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* "$rootfs"/usr/share/doc/* \
  "$rootfs"/usr/share/man/* "$rootfs"/usr/share/locale/*

say "docker import as $tag"
tar -C "$rootfs" --numeric-owner -c . | docker import \
  --change 'ENV PATH=/opt/tritonserver/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'ENV LD_LIBRARY_PATH=/opt/tritonserver/lib' \
  --change 'ENV TRITON_SERVER_VERSION=2.51.0' \
  --change "LABEL $label=$key" \
  --change 'WORKDIR /opt/tritonserver' \
  --change 'ENTRYPOINT ["/opt/nvidia/nvidia_entrypoint.sh"]' \
  --message "pytest-triton stand-in, inputs $key" \
  - "$tag" >/dev/null || die "docker import failed"

# a smoke check: the binary and the python stub find their libraries, the stub's Python its packages
# (tritonserver --help prints its usage and exits 1)
smoke='tritonserver --help 2>&1 | grep -q "^Usage: tritonserver" || { echo "tritonserver does not run"; exit 1; }
  if ldd /opt/tritonserver/backends/python/triton_python_backend_stub | grep "not found"; then exit 1; fi
  python3 -c "import numpy, onnxruntime, tokenizers"'
docker run --rm --network none --entrypoint /bin/sh "$tag" -c "$smoke" >&2 \
  || { docker image rm "$tag" >/dev/null 2>&1; die "the built image failed its smoke check (output above); removed it"; }

# keep one stand-in: drop images built from older inputs (and the untagged one a --rebuild replaced)
current=$(docker image inspect "$tag" --format '{{.Id}}')
docker image ls --no-trunc --filter "label=$label" --format '{{.ID}}' | sort -u | while read -r old; do
  [ "$old" = "$current" ] || docker image rm -f "$old" >/dev/null 2>&1 || true
done

say "built $tag in $((SECONDS - started))s ($(docker image inspect "$tag" --format '{{.Size}}' | awk '{printf "%.0f MB", $1/1e6}'))"
echo "$tag"
