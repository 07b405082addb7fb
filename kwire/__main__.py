from kwire.cli import main

raise SystemExit(main())
