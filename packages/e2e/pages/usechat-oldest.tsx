import { useChat } from "ai-sdk-react-oldest";
import { mount } from "./usechat-app.js";

void mount(useChat as never, "@ai-sdk/react 2.0.0 (ai 5.0.0)");
