import java.io.BufferedInputStream;
import java.io.BufferedReader;
import java.io.File;
import java.io.FileInputStream;
import java.io.FileOutputStream;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.OutputStreamWriter;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import org.apache.uima.UIMAFramework;
import org.apache.uima.analysis_engine.AnalysisEngine;
import org.apache.uima.analysis_engine.AnalysisEngineDescription;
import org.apache.uima.cas.CAS;
import org.apache.uima.cas.impl.XmiCasDeserializer;
import org.apache.uima.cas.impl.XmiCasSerializer;
import org.apache.uima.cas.impl.XmiSerializationSharedData;
import org.apache.uima.resource.ResourceManager;
import org.apache.uima.resource.metadata.ConfigurationParameterSettings;
import org.apache.uima.resource.metadata.MetaDataObject;
import org.apache.uima.resource.metadata.TypeSystemDescription;
import org.apache.uima.util.CasCreationUtils;
import org.apache.uima.util.TypeSystemUtil;
import org.apache.uima.util.XMLInputSource;

/**
 * casflow's UIMA engine bridge: one JVM per worker process, one JSON object per line on
 * stdin, one JSON answer per line on stdout ({"error": ...} on failure, the JVM goes on).
 *
 * <p>Requests: load {descriptor, typesystem, classpath, parameters} builds the engine
 * (its own ResourceManager, so each engine has its own extension class path) and a CAS
 * whose type system is casflow's merged with the engine's; answers {engine, typesystem}
 * with the merged type system as XML so the Python side can read the engine's types.
 * process {engine, input, output} reads an XMI file leniently into that CAS, runs the
 * engine on the initial view, and writes the CAS back as XMI with the same shared
 * serialization data, so every feature structure that came in keeps its xmi:id and
 * only the engine's new ones get new ids. System.out goes to stderr: the protocol owns
 * the real stdout.
 */
public final class UimaEngineServer {
  private static final class Engine {
    AnalysisEngine engine;
    CAS cas;
  }

  private final Map<String, Engine> engines = new HashMap<>();

  public static void main(String[] args) throws Exception {
    PrintWriter out = new PrintWriter(
        new OutputStreamWriter(new FileOutputStream(java.io.FileDescriptor.out),
            StandardCharsets.UTF_8), false);
    System.setOut(new PrintStream(new FileOutputStream(java.io.FileDescriptor.err), true,
        "UTF-8"));
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    UimaEngineServer server = new UimaEngineServer();
    String line;
    while ((line = in.readLine()) != null) {
      if (line.isEmpty()) {
        continue;
      }
      String answer;
      try {
        @SuppressWarnings("unchecked")
        Map<String, Object> request = (Map<String, Object>) new Json(line).value();
        answer = Json.write(server.handle(request));
      } catch (Throwable e) {
        Map<String, Object> error = new LinkedHashMap<>();
        Throwable cause = e;
        StringBuilder message = new StringBuilder(e.toString());
        while (cause.getCause() != null && cause.getCause() != cause) {
          cause = cause.getCause();
          message.append("; caused by ").append(cause);
        }
        error.put("error", message.toString());
        answer = Json.write(error);
      }
      out.println(answer);
      out.flush();
    }
    for (Engine engine : server.engines.values()) {
      engine.engine.collectionProcessComplete();
      engine.engine.destroy();
    }
  }

  private Map<String, Object> handle(Map<String, Object> request) throws Exception {
    String op = (String) request.get("op");
    Map<String, Object> answer = new LinkedHashMap<>();
    switch (op) {
      case "load": {
        String key = String.valueOf(engines.size());
        Engine engine = load(request);
        engines.put(key, engine);
        TypeSystemDescription merged =
            TypeSystemUtil.typeSystem2TypeSystemDescription(engine.cas.getTypeSystem());
        StringWriter xml = new StringWriter();
        merged.toXML(xml);
        answer.put("engine", key);
        answer.put("typesystem", xml.toString());
        return answer;
      }
      case "process": {
        Engine engine = engines.get((String) request.get("engine"));
        if (engine == null) {
          throw new IllegalArgumentException("no engine " + request.get("engine"));
        }
        process(engine, new File((String) request.get("input")),
            new File((String) request.get("output")));
        answer.put("ok", true);
        return answer;
      }
      default:
        throw new IllegalArgumentException("unknown op " + op);
    }
  }

  private static Engine load(Map<String, Object> request) throws Exception {
    File descriptor = new File((String) request.get("descriptor"));
    AnalysisEngineDescription description = UIMAFramework.getXMLParser()
        .parseAnalysisEngineDescription(new XMLInputSource(descriptor));
    @SuppressWarnings("unchecked")
    Map<String, Object> parameters = (Map<String, Object>) request.get("parameters");
    ConfigurationParameterSettings settings =
        description.getAnalysisEngineMetaData().getConfigurationParameterSettings();
    for (Map.Entry<String, Object> entry : parameters.entrySet()) {
      settings.setParameterValue(entry.getKey(), javaValue(entry.getValue()));
    }
    ResourceManager resources = UIMAFramework.newDefaultResourceManager();
    String classpath = (String) request.get("classpath");
    if (!classpath.isEmpty()) {
      resources.setExtensionClassPath(classpath, true);
    }
    // Relative model and import paths in a descriptor are found beside it.
    resources.setDataPath(descriptor.getAbsoluteFile().getParent());
    Engine engine = new Engine();
    engine.engine = UIMAFramework.produceAnalysisEngine(description, resources, null);
    TypeSystemDescription ours = UIMAFramework.getXMLParser()
        .parseTypeSystemDescription(new XMLInputSource(new File((String) request.get("typesystem"))));
    List<MetaDataObject> parts = new ArrayList<>();
    parts.add(engine.engine.getAnalysisEngineMetaData());
    parts.add(ours);
    engine.cas = CasCreationUtils.createCas(parts, null, resources);
    return engine;
  }

  private static Object javaValue(Object value) {
    // JSON gives Long and Double; UIMA wants Integer and Float, String[] for arrays.
    if (value instanceof Long) {
      return Integer.valueOf(((Long) value).intValue());
    }
    if (value instanceof Double) {
      return Float.valueOf(((Double) value).floatValue());
    }
    if (value instanceof List) {
      List<?> list = (List<?>) value;
      if (!list.isEmpty() && list.get(0) instanceof Boolean) {
        Boolean[] array = new Boolean[list.size()];
        for (int i = 0; i < array.length; i++) {
          array[i] = (Boolean) list.get(i);
        }
        return array;
      }
      if (!list.isEmpty() && list.get(0) instanceof Long) {
        Integer[] array = new Integer[list.size()];
        for (int i = 0; i < array.length; i++) {
          array[i] = ((Long) list.get(i)).intValue();
        }
        return array;
      }
      String[] array = new String[list.size()];
      for (int i = 0; i < array.length; i++) {
        array[i] = String.valueOf(list.get(i));
      }
      return array;
    }
    return value;
  }

  private static void process(Engine engine, File input, File output) throws Exception {
    CAS cas = engine.cas;
    cas.reset();
    XmiSerializationSharedData shared = new XmiSerializationSharedData();
    try (InputStream stream = new BufferedInputStream(new FileInputStream(input))) {
      // Lenient: types the engine's CAS does not know are kept aside, not an error.
      XmiCasDeserializer.deserialize(stream, cas, true, shared);
    }
    engine.engine.process(cas);
    File partial = new File(output.getPath() + ".partial");
    try (OutputStream stream = new FileOutputStream(partial)) {
      XmiCasSerializer.serialize(cas, cas.getTypeSystem(), stream, false, shared);
    }
    Files.move(partial.toPath(), output.toPath(), StandardCopyOption.REPLACE_EXISTING);
  }
}
