"""The build, in the pipeline's order: source -> conversation -> encode (render, mask, tokenize) -> pack -> output;
``pipeline`` runs it (``sftpack.build``)."""
