// The `find` command.
import Foundation
import ReactiveDefaults

extension Commands {
  static func find(_ arguments: [String]) throws {
    let words = try Words(arguments, command: "find")
    try words.expect(1...1, "'find' needs one word")
    let word = words.positional[0]
    guard !word.isEmpty else { throw RDefaults.usage("the word to find is empty.", command: "find") }
    var found = false
    for name in domainNames() {
      guard let store = try? openStore(name, command: "find", reading: true) else { continue }
      let entries = contents(store)
      let matching =
        name.localizedCaseInsensitiveContains(word)
        ? entries
        : entries.filter {
          $0.key.string.localizedCaseInsensitiveContains(word) || Formatting.contains(word, in: $0.value)
        }
      guard !matching.isEmpty else { continue }
      found = true
      RDefaults.printOut(
        "Found \(matching.count) key\(matching.count == 1 ? "" : "s") in domain '\(name)': "
          + Formatting.listing(.dictionary(matching)))
    }
    if !found { RDefaults.printError("No domain, key or value contains '\(Formatting.escaped(word))'.") }
  }
}
