"""Exports to and imports from other formats: tables (pandas, CSV, Parquet, JSON), Arrow,
safetensors and MosaicML Streaming (MDS)."""
