from kgroup.cli import main

raise SystemExit(main())
