// The snippets of the "Transactions and migrations" article, compiled and run; `snippetsMatchTheArticle` keeps
// them word for word the article's.
import Foundation
import ReactiveDefaults
import Testing

extension DefaultsKeys {
  fileprivate static let launchCount = DefaultsKey<Int>("launchCount", default: 0)
  fileprivate static let lastLaunch = DefaultsKey<Date?>("lastLaunch")
  fileprivate static let columns = DefaultsKey<Int>("columns", default: 1)
}

extension Theme: Codable {}

@Suite struct TransactionsArticleTests {
  @Test func theArticleRunsAsWritten() throws {
    let store = DefaultsStore.inMemory(["volumeLevel": .real(0.25), "theme": .integer(1)])
    try store.edit { tx in
      tx[.launchCount] += 1
      tx[.lastLaunch] = .now
    }
    try store.property(.launchCount).update { $0 += 1 }  // the one-key shorthand
    #expect(store[.launchCount] == 2)
    #expect(store[.lastLaunch] != nil)

    try store.migrate([
      .rename("volumeLevel", to: .volume),  // keep the value, drop the old key
      .convert(.theme, from: Int.self) { $0 == 1 ? .dark : .light },  // change a key's stored type
      .custom("2026-split-layout") { tx in tx[.columns] = 2 },  // anything else
    ])
    #expect(store[.volume] == 0.25)
    #expect(store[.theme] == .dark)
    #expect(store[.columns] == 2)

    // A suite where sindresorhus/Defaults stored a `Codable` enum as JSON text.
    do {
      let store = DefaultsStore.inMemory(["theme": .string(#""light""#)])
      try store.migrate([
        .convert(.theme, from: String.self) { json in try JSONDecoder().decode(Theme.self, from: Data(json.utf8)) }
      ])
      #expect(store[.theme] == .light)
    }
  }

  @Test func snippetsMatchTheArticle() throws {
    try expectSnippets(ofArticle: "TransactionsAndMigrations.md", in: #filePath, atLeast: 3)
  }
}
