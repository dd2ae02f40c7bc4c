from callscope.cli.main import main

main()
