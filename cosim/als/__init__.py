"""The application level (ALS): DLS techniques and the master-worker loop runtime."""
