from agentharness.cli.main import main

main()
