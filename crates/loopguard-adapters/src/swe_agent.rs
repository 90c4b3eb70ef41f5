//! SWE-agent `.traj` and mini-swe-agent `.traj.json`.
