"""Helpers shared by the test suite and the MPI checks: reference scenarios and digests."""
