"""The LENS paper's dynamic raw-corpus benchmark: HotpotQA data, frozen samples G_n, raw snapshots D_n, the five
systems, the resumable runner, metrics, lifecycle and reports (``lens bench …``)."""
