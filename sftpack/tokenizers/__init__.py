"""Tokenizers: the vocabulary interface, the file formats, where a build's tokenizer comes from, the offline
vocabularies."""
