"""Getting back to zero: what the app left in a region (`leftovers`), removing it (`removal`), and a
survey's teardown of what its own run created and nothing else (`survey_teardown`)."""
