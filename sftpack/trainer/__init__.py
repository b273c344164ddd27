"""Feeding trainers: the slime/miles rollout, the step-0 loss reference, the LM head and model placement."""
