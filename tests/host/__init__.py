"""A stand-in EC2 host for the servers' boot scripts: what the script runs is real (bash, the
scripts as synthesized, the AWS CLI), and only what cannot run here stands in, each with the
behaviour of the real thing that the scripts depend on:

- `systemd.py`: systemctl and the unit manager (start, stop, restart; Restart=on-failure,
  RestartPreventExitStatus, SuccessExitStatus, the start limit, OnFailure, Wants, BindsTo, timers);
- `docker.py`: the Docker CLI (pull against the emulated ECR, run a scripted model server on a
  loopback port, logs, stop, build, import, push, create, cp);
- `bin/curl`: the instance metadata service (every other request goes to the real curl);
- `bin/nvidia-smi` and `/dev/neuron0`: the accelerator; `bin/journalctl`: the kernel log;
  `bin/fallocate`, `mkswap`, `swapon`: the swap file (a real one would take 16 GiB here);
- `bin/lsblk`, `mkfs.ext4`, `mount`, `df`: the instance store the type has (or none), already
  mounted as a DLAMI may leave it or not, its free room, and the bind mounts that move Docker's
  data onto it (the docker stand-in records which disk each pull landed on).

`machine.py` puts them together: one `Host` per emulated instance, booted with its user data.
Time runs faster on these hosts (`INFERENCE_TIME_SCALE`): systemd's delays and timers shrink.
"""
