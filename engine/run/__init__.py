"""The run's life in the parent: the request, the runner and its stage children, the session, the owner
that ends a run, the background engine and its control socket."""
