"""Reaching the servers once they are up: the state file of open forwards (`forwards_file`), the SSM
port forward that opens and closes them (`ssm_forward`), and the bench run on each server's own
instance through Run Command (`in_region`)."""
