// The snippets of the "Remembered documents" article, compiled and run; `snippetsMatchTheArticle` keeps them word for
// word the article's.
import Foundation
import ReactiveDefaults
import Testing

extension DefaultsKeys {
  static let lastDocument = DefaultsKey<DocumentReference?>("lastDocument")
}

func remember(_ pickedURL: URL, in store: DefaultsStore) throws {
  store[.lastDocument] = try DocumentReference(url: pickedURL)
}

func reopen(from store: DefaultsStore) throws -> String? {
  try store.withAccess(to: .lastDocument) { url in try String(contentsOf: url, encoding: .utf8) }
}

@Suite struct RememberedDocumentsArticleTests {
  @Test func theArticleRunsAsWritten() throws {
    let file = URL(fileURLWithPath: NSTemporaryDirectory() + "remembered-\(UUID().uuidString).txt")
    try "the picked text".write(to: file, atomically: true, encoding: .utf8)
    defer { try? FileManager.default.removeItem(at: file) }
    let store = DefaultsStore.inMemory()
    #expect(try reopen(from: store) == nil)
    try remember(file, in: store)
    #expect(try reopen(from: store) == "the picked text")
  }

  @Test func snippetsMatchTheArticle() throws {
    try expectSnippets(ofArticle: "RememberedDocuments.md", in: #filePath, atLeast: 3)
  }
}
