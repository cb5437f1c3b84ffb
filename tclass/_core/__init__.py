"""The core layer: memory-mapped tensors, batch-size and key arithmetic, device parsing
and the torch-function table. Pure: imports nothing of tclass but ``tclass.errors``."""
