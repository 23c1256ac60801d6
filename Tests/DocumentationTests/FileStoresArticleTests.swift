// The snippets of the "Settings in a file you choose" article, compiled and run; `snippetsMatchTheArticle` keeps
// them word for word the article's.
import Foundation
import ReactiveDefaults
import Testing

@Suite struct FileStoresArticleTests {
  @Test func theArticleRunsAsWritten() throws {
    defer { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "com.example.editor") }
    let url = URL(fileURLWithPath: NSTemporaryDirectory() + "com.example.editor/settings.plist")
    let settings = DefaultsStore(fileURL: url)!
    settings[.volume] = 0.8
    let token = settings.property(.volume).observe { print("volume:", $0) }
    try settings.save()
    token.cancel()
    let data = try #require(FileManager.default.contents(atPath: url.path))
    let root = try PropertyListSerialization.propertyList(from: data, format: nil) as? [String: Any]
    #expect(root?["volume"] as? Double == 0.8)
  }

  @Test func snippetsMatchTheArticle() throws {
    try expectSnippets(ofArticle: "FileStores.md", in: #filePath, atLeast: 1)
  }
}
