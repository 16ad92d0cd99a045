// Mill build of the Chisel RTL (rtl/). `./mill rtl.run` elaborates and writes build/rtl/*.sv.
// Versions: Scala 2.13.15 + Chisel 6.7.0 (+ its compiler plugin); Chisel fetches firtool 1.62.1
// itself (org.chipsalliance:llvm-firtool). Message bundles, error codes and core enums are generated from schema/ by the apta
// Python package (python/apta, stdlib only, run from its source directory).
import mill._
import mill.scalalib._

object rtl extends ScalaModule {
  def scalaVersion = "2.13.15"
  val chiselVersion = "6.7.0"

  // (Elaborate reads rtl/variants.json with ujson, which Chisel already depends on)
  def ivyDeps = Agg(ivy"org.chipsalliance::chisel:$chiselVersion")
  def scalacPluginIvyDeps = Agg(ivy"org.chipsalliance:::chisel-plugin:$chiselVersion")
  def scalacOptions = Seq("-language:reflectiveCalls", "-deprecation", "-feature", "-Xcheckinit", "-Ymacro-annotations")

  // hand-written sources: every .scala under rtl/ (shared parts at the top, otc/ oic/ osc/ opc/)
  def sources = T.sources(millSourcePath)

  // message bundles, opcodes, error codes and core enums, generated from the language-neutral
  // schema/ (never checked in) by `python3 -m apta.messages scala`
  def schema = T.source(T.workspace / "schema")
  def generator = T.source(T.workspace / "python" / "apta")
  def generatedSources = T {
    os.proc("python3", "-m", "apta.messages", "scala", "--schema", schema().path / "messages.json",
      "--out", T.dest / "Messages.scala")
      .call(stdout = os.Inherit, env = Map("PYTHONPATH" -> (generator().path / os.up).toString))
    Seq(PathRef(T.dest))
  }

  def mainClass = Some("apta.Elaborate")
  // `./mill rtl.run [outdir]` runs from the repo root so relative paths land in build/rtl
  def forkWorkingDir = T.workspace
}
