"""The Alibaba Cloud ECS cluster kind: credentials, the ECS calls (official SDK), FastGPU-style
provisioning, and the cluster that reaches the instances over SSH."""
