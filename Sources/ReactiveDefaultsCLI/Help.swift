enum Help {
  static let usageLines: [String: String] = [
    "domains": "rdefaults domains",
    "read": "rdefaults read [DOMAIN [KEY]]",
    "write": "rdefaults write DOMAIN KEY [-string|-int|-float|-bool|-date|-data|-url|-array|-dict] VALUE...",
    "delete": "rdefaults delete DOMAIN [KEY]",
    "watch": "rdefaults watch DOMAIN [KEY...] [--json]",
    "export": "rdefaults export DOMAIN FILE",
    "import": "rdefaults import DOMAIN FILE",
    "demo": "rdefaults demo",
    "help": "rdefaults help [COMMAND]",
  ]

  static let overview = """
    rdefaults: read, write and watch the UserDefaults domains Foundation keeps as plist files
    (in $XDG_CONFIG_HOME, else ~/.config).

    Usage: rdefaults COMMAND [ARGUMENTS]

    Commands:
      domains                         List the domains.
      read [DOMAIN [KEY]]             Print every domain, one domain, or one value.
      write DOMAIN KEY [-TYPE] VALUE  Write a value (-string by default).
      delete DOMAIN [KEY]             Remove a key, or a whole domain.
      watch DOMAIN [KEY...] [--json]  Print a line per change until interrupted.
      export DOMAIN FILE              Save a domain as an XML plist ('-' for standard output).
      import DOMAIN FILE              Merge the keys of a plist file into a domain ('-' for standard input).
      demo                            A short tour of the library, in a scratch domain.

    Options: -h, --help (also 'rdefaults help COMMAND'), --version.
    Exit status: 0 success, 64 usage error, 1 failure.
    """

  static let commands: [String: String] = [
    "domains": """
    Usage: rdefaults domains

    Lists the domains (plist files) in the preferences folder, one per line.
    """,
    "read": """
    Usage: rdefaults read [DOMAIN [KEY]]

    With a KEY, prints its value plainly (hello, 42, 1 for true). With a DOMAIN only, prints the domain as a
    plist-style listing. With nothing, prints every domain. A missing domain or key is a failure (exit 1).
    """,
    "write": """
    Usage: rdefaults write DOMAIN KEY [TYPE] VALUE...

    Types: -string (the default), -int, -float, -bool (YES/NO/true/false/1/0), -date (ISO 8601, such as
    2025-01-31T12:00:00Z), -data (hex digits), -url (stored as Foundation reads URLs), -array VALUE... (strings),
    -dict KEY VALUE... (string values). Observers of the key, in any process using ReactiveDefaults, are told.
    """,
    "delete": """
    Usage: rdefaults delete DOMAIN [KEY]

    Removes a key, or with no KEY the whole domain and its file. A missing domain or key is a failure (exit 1).
    """,
    "watch": """
    Usage: rdefaults watch DOMAIN [KEY...] [--json]

    Prints a line per change, 'KEY = VALUE' (or 'KEY removed'), until interrupted (Ctrl-C). With KEYs, only
    those keys; with --json, one JSON object per line: {"key": "...", "value": ...} (null when removed).
    Changes made by other processes arrive as soon as they are saved.
    """,
    "export": """
    Usage: rdefaults export DOMAIN FILE

    Writes the domain as an XML property list to FILE, or to standard output for '-'.
    """,
    "import": """
    Usage: rdefaults import DOMAIN FILE

    Reads a property list whose root is a dictionary from FILE ('-' for standard input) and writes each of
    its keys into the domain (other keys are kept).
    """,
    "demo": """
    Usage: rdefaults demo

    A self-contained tour: a property's current value and changes, two bound properties, and a change made by
    a child process arriving through the file watcher. Uses a scratch domain, removed at the end.
    """,
    "help": """
    Usage: rdefaults help [COMMAND]

    Prints the overview, or the help of one command.
    """,
  ]
}
