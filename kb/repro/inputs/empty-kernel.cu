// kb repro: the CUDA file nvcc is given; the failures recorded come from the target options alone.
__global__ void k() {}
