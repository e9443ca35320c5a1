"""What a decisive signature must hold (KB084, kb.records.schema.decisive_line): a line that names
the running GPU's architecture, or says the build lacks it. Lines from entries whose writers could
not mark them decisive under the narrower rule, and lines that must stay out."""

import pytest

from kb.records.schema import decisive_line


@pytest.mark.parametrize("line", [
    "ptxas fatal   : Value 'sm_120a' is not defined for option 'gpu-name'",
    "nvcc fatal   : Unsupported gpu architecture 'compute_120a'",
    "RuntimeError: FlashInfer: Unsupported SM 12.0",
    # PaddlePaddle's gpu_resources.cc warning and its 3.x refusal
    "The GPU compute capability in your current machine is 120, which is not supported by Paddle",
    "Mismatched GPU Architecture: The installed PaddlePaddle package was compiled for 75 80 86 89 ,but your current "
    "GPU is 120",
    # text-embeddings-inference's Candle backend
    "Could not start backend: Runtime compute cap 120 is not compatible with compile time compute cap 90",
    # XLA's driver fallback
    "Falling back to the CUDA driver for PTX compilation; ptxas does not support CC 12.0",
    # TransformerEngine's recipe check
    "AssertionError: MXFP8 (for all gemm layouts) is not supported on 12.0+ architectures yet.",
])
def test_a_line_naming_the_architecture_may_be_decisive(line):
    assert decisive_line(line)


@pytest.mark.parametrize("line", [
    "RuntimeError: CUDA error: no kernel image is available for execution on the device",
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB",
    "pynvml.NVMLError_NotSupported: Not Supported",
    "ValueError: max_num_batched_tokens (8192) is smaller than max_model_len (32768)",
    "compute capability check failed",  # no number
    "CUDA 12.8 runtime",  # a toolkit version is no architecture
])
def test_a_line_naming_no_architecture_is_not(line):
    assert not decisive_line(line)
