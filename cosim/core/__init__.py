"""Core building blocks: integer-tick time, keyed random streams, unit parsing."""
