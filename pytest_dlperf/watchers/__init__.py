"""The watchers beside a launch, on the harness side: each wraps every node's launch command and reads
its log back over the measured window: the pace probe (``pace``) and the GPU watcher (``gpuwatch``);
their logs' common header (``nodelog``). Empty on purpose: the runner imports each one it wraps."""
