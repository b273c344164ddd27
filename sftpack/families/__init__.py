"""Template families: the registry, model profiles and loss-mask rules, and one native renderer per family."""
