"""Outputs of a run: scheduling metrics now (`cosim.output.metrics`); HDF5 results, OTF2
traces, SWF schedules and plots join here (DESIGN.md §9). Only rank 0 writes outputs.
"""
