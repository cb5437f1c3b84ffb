"""The engine: ``TensorDict``, lazy stacks, non-tensor nodes, stacking, padding,
consolidation. Imports the base and core layers only."""
