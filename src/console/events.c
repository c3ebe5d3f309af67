/* SKELETON: replaced by its owner. */
