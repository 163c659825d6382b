"""Parts shared by DirPG and the baselines: the learn loop over simulators, actor-only policies, batched policy
evaluation, the VecEnv adaptor, the simulator backends and the interaction-counting callbacks."""
