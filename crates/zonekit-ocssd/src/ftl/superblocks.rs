//! Superblock bookkeeping shared by SBM_GCL and HSBM_GCL.
