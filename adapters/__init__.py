"""The built-in SDKs, one folder each (``adapters/<sdk>/``), registered through the
``misfit_bench.adapters`` entry-point group exactly as an outside SDK registers its own."""
