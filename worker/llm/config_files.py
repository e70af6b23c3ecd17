"""Reading the YAML/JSON files of this package (price tables, model scripts): `contracts.model_files`,
where the service reads the same price table."""

from contracts.model_files import ConfigFileError, describe, load_model_file

__all__ = ["ConfigFileError", "describe", "load_model_file"]
