"""Archives as every reader meets them: the guarded tar reader (limits on headers, members and bytes) and
SageMaker's model.tar.gz (its default-model variable, its sidecars, unpacking)."""
