"""apta.schema_tools: the schema folder's programs (mutants.py: the mutant registry's checker)."""
