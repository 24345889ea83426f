"""benchmarks/finetune_job.py's races, one module each: the settings and
one-job runner they share (`jobs`), the tools race's peer workers
(`peers`) and table (`tools`), `lora`, `raw_text`, `compile_auto`,
`profile`."""
