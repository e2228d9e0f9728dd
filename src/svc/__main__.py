from svc.cli.main import main

raise SystemExit(main())
