"""benchmarks/finetune_job.py's race: the settings and one-job runner
(`jobs`), the peer workers (`peers`) and the table (`tools`)."""
