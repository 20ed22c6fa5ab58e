# Sourced by the device scripts: install carried wheels (.whl-dask: dask, distributed, dask-cuda and
# their pure dependencies; .whl: wgpu) into a temporary site directory and put it on PYTHONPATH.
# The device image has no package index (DEVICE.md); fetch the wheels once, in the checkout:
#   python3 -m pip download --only-binary=:all: --python-version 3.12 --implementation cp \
#     --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
#     -d .whl-dask dask-cuda      # then drop numpy, bokeh, pillow, contourpy, xyzservices, narwhals
# wgpu on the NVIDIA Vulkan ICD also needs .gl/ (unpacked by the caller with dpkg -x): the loader
# libvulkan1 and libglvnd's libglvnd0 libglx0 libgl1 libegl1 (`apt-get download` them) -- the ICD,
# libGLX_nvidia.so.0, is loaded through libglvnd; with the loader alone no adapter is found.
site=$(mktemp -d)
wheels=()
for w in .whl-dask/*.whl .whl/*.whl; do
  [ -f "$w" ] || continue
  # keep the image's own CUDA Python packages (CuPy was built against them)
  case $(basename "$w") in cuda_pathfinder-*) python3 -c "import cuda.pathfinder" 2>/dev/null && continue;; esac
  wheels+=("$w")
done
if [ ${#wheels[@]} -gt 0 ]; then
  python3 -m pip install -q --no-index --no-deps --target "$site" "${wheels[@]}" 2>&1 | tail -3
fi
export PYTHONPATH="$site:$PWD/src"
