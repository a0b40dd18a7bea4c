"""One trial, one pipeline: what a trial is (spec), the phases every command runs it through
(pipeline), the data it runs on (data), and the one writer of runs and trials into the store
(recorder)."""
