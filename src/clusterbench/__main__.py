from clusterbench.cli.main import entry

entry()
