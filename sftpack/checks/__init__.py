"""Checking rows after the build: verify a recipe's figures (and rebuild), inspect a row, diff two rows files."""
