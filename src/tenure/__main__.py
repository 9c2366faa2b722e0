from tenure.cli import main

main()
