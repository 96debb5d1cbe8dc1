#!/bin/bash
# One device call's worth of Hopper checks, run on the GPU machine from the
# repository root with build-pack/ (scripts/device_ctest.sh pack) and
# tilelang_bundle/ (scripts/tilelang_bundle.sh) carried:
#   scripts/device_bench.sh MODE [ARGS]
# MODE: all (GPU tests of the Hopper paths + attention bench), tests REGEX,
# attn x KERNELS, gemm SHAPES CONFIGS VARIANTS, fulltests (every gpu test),
# fp8 (fp8 tests + benches), big (fp8, attention with the overlap variant,
# DeepGEMM, GEMM), mini (a short subset), tuned [SHAPES] (kiln tune through a
# kilnd at issue 28's three large shapes or SHAPES, then bench/hopper_tuned.py:
# the bests against cuBLAS), splitk (split-K at decode shapes: the split tests, the
# fused reduction against the reduce kernel and TileLang at M = 16, and
# kiln-gemm-launch through a kilnd at M = 16), compat (issue 30 on the GPU: the public
# set's 18 kernels against NumPy, then the public set's own main() under the shim through a
# kilnd; COMPAT_FILES overrides the file list). `alt` in a bench is the kiln-opt in
# build-pack/$ALTDIR/kiln-opt.xz (default alt; big and mini use pin). Results
# go to $OUT (the device tool's folder) and the tail to stdout.
set -u
cd "$(dirname "$0")/.."
mkdir -p /tmp/tl /tmp/g /tmp/shared
[ -d /tmp/tl/tilelang ] || tar -xJf tilelang_bundle/tilelang.tar.xz -C /tmp/tl
[ -d /tmp/g/gpu_ctest ] || tar -C /tmp/g -xJf build-pack/gpu_ctest.tar.xz
[ -d /tmp/shared/warp_specialize ] || tar -C /tmp/shared -xf /tmp/g/gpu_ctest/examples.tar
export KILN_TILELANG_EXAMPLES=/tmp/shared
B=/tmp/g/gpu_ctest/bundle/bin
ALTDIR=${ALTDIR:-alt}
xz -dc build-pack/$ALTDIR/kiln-opt.xz > /tmp/alt-kiln-opt && chmod +x /tmp/alt-kiln-opt
cat > /tmp/alt.sh <<EOS
#!/bin/bash
LD_LIBRARY_PATH=/tmp/g/gpu_ctest/bundle/lib exec /tmp/alt-kiln-opt "\$@"
EOS
chmod +x /tmp/alt.sh
nvidia-smi -L
what=${1:-all}
if [ "$what" = all ] || [ "$what" = tests ]; then
  (unset PYTHONPATH; timeout 150 bash scripts/device_ctest.sh run build-pack/gpu_ctest.tar.xz -j 8 --timeout 100 -R "${2:-flashmla|wgmma_async|tilelang_ws|mha_fwd|ws_body|wgmma_register}") > $OUT/ctest_$what.txt 2>&1
  tail -15 $OUT/ctest_$what.txt
fi
if [ "$what" = all ] || [ "$what" = attn ]; then
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 290 python3 bench/hopper_attention.py --kiln-opt $B/kiln-opt --kiln-opt-alt /tmp/alt.sh --variants kiln,alt,tilelang --kernels ${3:-flashmla,mha} --json $OUT/attn.json > $OUT/attn.txt 2>&1
  tail -30 $OUT/attn.txt
fi
if [ "$what" = gemm ]; then
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 500 python3 bench/hopper_gemm.py --kiln-opt $B/kiln-opt --kiln-opt-alt /tmp/alt.sh --shapes ${2:-8192x8192x8192,128x14336x4096,16x4096x4096} --configs ${3:-128x256x64s3t256,128x128x32s3t128,64x128x64s4t128} --dtypes float16 --variants ${4:-tma-ws,alt,tilelang} --json $OUT/gemm.json > $OUT/gemm.txt 2>&1
  tail -40 $OUT/gemm.txt
fi
if [ "$what" = fulltests ]; then
  (unset PYTHONPATH; timeout 560 bash scripts/device_ctest.sh run build-pack/gpu_ctest.tar.xz -j 8 --timeout 150) > $OUT/ctest_full.txt 2>&1
  tail -25 $OUT/ctest_full.txt
fi
if [ "$what" = fp8 ]; then
  (unset PYTHONPATH; timeout 200 bash scripts/device_ctest.sh run build-pack/gpu_ctest.tar.xz -j 8 --timeout 150 -R "${2:-fp8|Fp8|wgmma|Wgmma}") > $OUT/ctest_fp8.txt 2>&1
  grep -E "tests passed|Failed|Passed|\*\*\*" $OUT/ctest_fp8.txt | tail -30
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 300 python3 bench/hopper_fp8_gemm.py --kiln-opt $B/kiln-opt --shapes ${3:-4096x4096x4096,8192x8192x8192} --configs ${4:-128x128x64,128x128x128} --dtypes ${5:-float8_e4m3} --json $OUT/fp8.json > $OUT/fp8.txt 2>&1
  grep -v "INFO\|WARN" $OUT/fp8.txt | tail -30
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 200 python3 bench/hopper_fp8_gemm.py --kiln-opt $B/kiln-opt --kernel deepgemm --shapes 4096x4096x4096 --json $OUT/deepgemm.json > $OUT/deepgemm.txt 2>&1
  grep -v "INFO\|WARN" $OUT/deepgemm.txt | tail -12
fi
if [ "$what" = big ]; then
  (unset PYTHONPATH; timeout 120 bash scripts/device_ctest.sh run build-pack/gpu_ctest.tar.xz -j 8 --timeout 100 -R "fp8|Fp8|wgmma|Wgmma|overlap") > $OUT/ctest_fp8.txt 2>&1
  grep -E "tests passed|\*\*\*|Failed" $OUT/ctest_fp8.txt | tail -12
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 150 python3 bench/hopper_fp8_gemm.py --kiln-opt $B/kiln-opt --shapes 4096x4096x4096,8192x8192x8192 --configs 128x128x64,128x128x128 --dtypes float8_e4m3 --rounds 2 --json $OUT/fp8.json > $OUT/fp8.txt 2>&1
  grep -v "INFO\|WARN" $OUT/fp8.txt | tail -12
  xz -dc build-pack/pin/kiln-opt.xz > /tmp/alt-kiln-opt && chmod +x /tmp/alt-kiln-opt
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 150 python3 bench/hopper_attention.py --kiln-opt $B/kiln-opt --kiln-opt-alt /tmp/alt.sh --variants kiln,alt,overlap,tilelang --kernels mha,flashmla --json $OUT/attn.json > $OUT/attn.txt 2>&1
  grep -v "INFO\|WARN" $OUT/attn.txt
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 100 python3 bench/hopper_fp8_gemm.py --kiln-opt $B/kiln-opt --kernel deepgemm --shapes 4096x4096x4096 --rounds 2 --json $OUT/deepgemm.json > $OUT/deepgemm.txt 2>&1
  grep -v "INFO\|WARN" $OUT/deepgemm.txt | tail -6
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 120 python3 bench/hopper_gemm.py --kiln-opt $B/kiln-opt --kiln-opt-alt /tmp/alt.sh --shapes 8192x8192x8192 --configs 128x256x64s3t256,128x128x32s3t128,64x128x64s4t128 --dtypes float16 --variants tma-ws,alt,tilelang --json $OUT/gemm.json > $OUT/gemm.txt 2>&1
  grep -v "INFO\|WARN" $OUT/gemm.txt
fi
if [ "$what" = mini ]; then
  (unset PYTHONPATH; timeout 70 bash scripts/device_ctest.sh run build-pack/gpu_ctest.tar.xz -j 12 --timeout 60 -R "fp8|Fp8|wgmma|Wgmma|overlap") > $OUT/ctest_fp8.txt 2>&1
  grep -E "tests passed|\*\*\*|Failed" $OUT/ctest_fp8.txt | tail -12
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 60 python3 bench/hopper_fp8_gemm.py --kiln-opt $B/kiln-opt --shapes 8192x8192x8192 --configs 128x128x64,128x128x128 --dtypes float8_e4m3 --rounds 2 --json $OUT/fp8.json > $OUT/fp8.txt 2>&1
  grep -v "INFO\|WARN" $OUT/fp8.txt | tail -6
  xz -dc build-pack/pin/kiln-opt.xz > /tmp/alt-kiln-opt && chmod +x /tmp/alt-kiln-opt
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 60 python3 bench/hopper_attention.py --kiln-opt $B/kiln-opt --kiln-opt-alt /tmp/alt.sh --variants kiln,alt,tilelang --kernels mha --json $OUT/attn.json > $OUT/attn.txt 2>&1
  grep -v "INFO\|WARN" $OUT/attn.txt
fi
if [ "$what" = tuned ]; then
  export LD_LIBRARY_PATH=/tmp/g/gpu_ctest/bundle/lib
  $B/kilnd --listen 127.0.0.1:7071 --cache-dir /tmp/kc_tuned > $OUT/kilnd.log 2>&1 &
  for i in $(seq 1 60); do $B/kiln health --server 127.0.0.1:7071 >/dev/null 2>&1 && break; sleep 0.5; done
  shapes=${2:-4096x4096x4096,4096x14336x4096,8192x8192x8192}
  for shape in ${shapes//,/ }; do
    IFS=x read -r m n k <<< "$shape"
    timeout 120 $B/kiln tune examples/gemm/gemm.py --bind M=$m --bind N=$n --bind K=$k --target cuda:sm_90 --top-k 8 --server 127.0.0.1:7071 --progress never --json > $OUT/$shape.json 2> $OUT/tune_$shape.err
  done
  kill %1
  tunes=""
  for shape in ${shapes//,/ }; do tunes="$tunes $OUT/$shape.json"; done
  (unset LD_LIBRARY_PATH; timeout 200 python3 bench/hopper_tuned.py --kiln-opt $B/kiln-opt $tunes)
fi
if [ "$what" = splitk ]; then
  (unset PYTHONPATH; timeout 150 bash scripts/device_ctest.sh run build-pack/gpu_ctest.tar.xz -j 8 --timeout 100 -R "split_k|gpu/programs/gemm") > $OUT/ctest_splitk.txt 2>&1
  grep -E "tests passed|\*\*\*|Failed" $OUT/ctest_splitk.txt | tail -12
  (export LD_LIBRARY_PATH=/tmp/g/gpu_ctest/bundle/lib
   $B/kilnd --listen 127.0.0.1:7072 --cache-dir /tmp/kc_launch > $OUT/kilnd_launch.log 2>&1 &
   for i in $(seq 1 60); do $B/kiln health --server 127.0.0.1:7072 >/dev/null 2>&1 && break; sleep 0.5; done
   timeout 60 $B/kiln-gemm-launch --file examples/gemm/gemm.py --server 127.0.0.1:7072 --m 16 --n 4096 --k 4096 --block-m 64 --block-n 128 --block-k 64 --stages 4 --threads 128 --arch sm_90 2>&1 | tail -3
   kill %1)
  PYTHONPATH=/tmp/tl TILELANG_DISABLE_CACHE=1 timeout 240 python3 bench/hopper_gemm.py --kiln-opt $B/kiln-opt --shapes ${2:-16x4096x4096,16x8192x8192} --configs ${3:-16x128x128s5t128,16x64x256s3t128,64x128x64s4t128,128x256x64s3t256} --dtypes float16 --variants ${4:-tma-ws,fusedk,nosplit,tilelang} --rounds 3 --json $OUT/splitk.json > $OUT/splitk.txt 2>&1
  grep -v "INFO\|WARN" $OUT/splitk.txt | tail -30
fi
if [ "$what" = compat ]; then
  export LD_LIBRARY_PATH=/tmp/g/gpu_ctest/bundle/lib
  timeout 240 python3 tests/compat/public_set.py --examples /tmp/shared --kiln-run $B/kiln-run --work /tmp/ps --target-args "--target cuda:0" --python python3 > $OUT/public_set_gpu.txt 2>&1
  tail -20 $OUT/public_set_gpu.txt
  $B/kilnd --listen 127.0.0.1:7074 --cache-dir /tmp/kc_examples > $OUT/kilnd_examples.log 2>&1 &
  for i in $(seq 1 60); do $B/kiln health --server 127.0.0.1:7074 >/dev/null 2>&1 && break; sleep 0.5; done
  (unset LD_LIBRARY_PATH; PYTHONPATH=$PWD/clients/python timeout ${COMPAT_TIMEOUT:-300} python3 tests/compat/examples_own_tests.py --examples /tmp/shared --server 127.0.0.1:7074 --timeout 120 --json $OUT/examples_own.json ${COMPAT_FILES:---public}) > $OUT/examples_own.txt 2>&1
  tail -14 $OUT/examples_own.txt
  kill %1
fi
