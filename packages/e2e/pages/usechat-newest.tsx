import { useChat } from "ai-sdk-react-newest";
import { mount } from "./usechat-app.js";

void mount(useChat as never, "@ai-sdk/react 2.0.280 (newest 5.x)");
